class Phase:
    DECODE: str

class Backend:
    DISABLED: str

def check_cuda_graph_backend(phase: str, backend: str) -> bool: ...
