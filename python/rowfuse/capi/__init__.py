"""The C binding: ctypes over librowfuse.so (clib), the kernel ABI structs (cabi) and
the names rowfuse/plan.h declares (names)."""
