# The compiled build's declaration of RunContext (Note [typed locals] in autodsl/_pure.py): the
# hot paths read its fields as struct members.

cdef class RunContext:
    cdef public object grad_enabled, pos, ieee_depth, in_pass, quiet, anomaly, journal, names
    cdef public object files_allowed, base_dir, trace_enabled, trace_sink, trace_printer
    cdef public object last_trace, last_backward, breaks, left, loop_progress, language, default_dtype
    cdef public object default_device, owns_defaults, capture, limits, host_entry, rng
    cdef public object source_limit, dask_scheduler, deferred
