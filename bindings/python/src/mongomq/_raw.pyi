# The private C extension (SWIG, from bindings/swig/mongomq.i + lang/python.i).
# Not part of the public API; typed loosely for the package's own type checks.
from typing import Any

MQ_OK: int
MQ_EMPTY: int
MQ_LEASE_LOST: int
MQ_INTERRUPTED: int
MQ_CANCELLED: int
MQ_ERR_ARG: int
MQ_ERR_CONNECT: int
MQ_ERR_SERVER: int
MQ_ERR_NOMEM: int
MQ_ERR_INTERNAL: int
MQ_PRIORITY_MIN: int
MQ_PRIORITY_MAX: int
MQ_BATCH_MAX: int

def __getattr__(name: str) -> Any: ...
