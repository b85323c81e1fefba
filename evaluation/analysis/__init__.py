"""Analysis tools of paper 002 (Sec. 3.2, 4.3, A.4): Grad-CAM, t-SNE of features, spectra."""
