"""The settings tree: volsched's config file, the environment and the flags, built
once into typed dataclasses and passed explicitly; and the legacy Policy file.

Nothing here waits or talks: it reads files and validates. Every other daemon package may
import it; it imports none of them.
"""
