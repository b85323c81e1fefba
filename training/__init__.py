"""Dataset reader, augmentations, samplers, the trainer, checkpoints and DDP."""
