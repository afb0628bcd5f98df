"""volsched: a storage-aware Kubernetes scheduler.

The subpackages (``volsched.cache``, ``volsched.scheduling``, ``volsched.daemon``,
``volsched.emulator``, ``volsched.migrations``) keep their folders at the top of the
repository; the links beside this file give them their ``volsched.`` import names in a
checkout, and a built wheel holds them as ordinary subpackages. The import names live
under ``volsched.`` so that an installed volsched never shadows another distribution's
``daemon`` or ``cache`` package.
"""
