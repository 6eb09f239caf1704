"""Training paradec's own drafters for the embedded model by self-distillation."""
