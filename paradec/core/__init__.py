"""The decode loop and what it is made of: the step types, the verifier, sampling, the tree, the targets."""
