"""Tools for understanding a gradient: trace views, graph, explain, why, check, step, plot, info
and the functional API. They sit on the ops and the core, and nothing below imports them."""
