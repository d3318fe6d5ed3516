"""The adversarial suite: the real app attacked as a hostile or careless caller would, one module per family."""
