"""Hard negatives: captions that differ from the truth by one controlled change."""
