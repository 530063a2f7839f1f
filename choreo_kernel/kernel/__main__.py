"""`python -m choreo_kernel.kernel -f CONNECTION_FILE`: what the kernelspec's argv starts."""

from ipykernel.kernelapp import IPKernelApp

from choreo_kernel.kernel.kernel import ChoreoKernel

if __name__ == "__main__":
    IPKernelApp.launch_instance(kernel_class=ChoreoKernel)
