"""How the embedded judge is trained: data readers and the by-claim split, synthetic pairs, the
training script (``python -m training.train``). Not part of the installed package."""
