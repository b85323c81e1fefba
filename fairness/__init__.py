"""Group metrics, FDR/ABF, ODTA, ISO PAD metrics, protocols, FairSWAP and metamorphic testing."""
