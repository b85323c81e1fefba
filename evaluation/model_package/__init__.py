"""Model packages: a trained detector with everything that makes its scores true elsewhere.

A package is a folder of three files (the layout of a Hugging Face model repository)::

    model.safetensors   the weights (no pickle)
    config.json         detector, model config, input size and normalisation, crop, face-crop
                        settings, frames per video, validation threshold, training and
                        validation data with their index hashes (schema: :mod:`.schema`)
    README.md           the model card, with the Hub's model-index metadata (:mod:`.card`)

:func:`.export.export_run` and :func:`.export.export_weights` write one; :func:`.load.load_model`
(``fairforensics.load_model``) reads one from a folder or ``hf:OWNER/NAME[@REVISION]``
(:mod:`.hub`). The submodules are imported where used, so this one imports nothing.
"""
