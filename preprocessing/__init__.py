"""Raw videos and images -> aligned face crops, landmarks, masks and the dataset index JSON."""
