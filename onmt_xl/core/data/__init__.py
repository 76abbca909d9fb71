"""Corpora that ship with the package: the synthetic SVO→SOV corpus with gold alignments."""
