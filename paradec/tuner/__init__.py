"""The tuner (python -m paradec tune): each method's settings searched for this machine, saved as a preset file."""
