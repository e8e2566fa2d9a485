"""Runs a lab module (.vmfb) through the IREE runtime's Python API.

`load(path, driver)` returns a callable that takes numpy arrays or device arrays and
returns the device array IREE gives back (`.to_host()` for numpy). Drivers: local-task
(the llvm-cpu module), cuda (the CUDA module). The exported function is `main` of the
module turbine names `module`; it is synchronous (IREE's default async-internal model
waits on the result's fence before returning).
"""

from __future__ import annotations


class Module:
    def __init__(self, path: str, driver: str):
        import iree.runtime as rt

        self.config = rt.Config(driver)
        self.context = rt.SystemContext(config=self.config)
        self.context.add_vm_module(rt.VmModule.mmap(self.config.vm_instance, path))
        self.main = self.context.modules.module["main"]
        self.device = self.config.device

    def to_device(self, array):
        import iree.runtime as rt

        return rt.asdevicearray(self.device, array)

    def __call__(self, *args):
        return self.main(*args)


def load(path: str, driver: str) -> Module:
    return Module(path, driver)
