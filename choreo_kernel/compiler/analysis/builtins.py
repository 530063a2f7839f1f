"""The names the language defines: built-in functions of expressions and of futures."""

MATH_BUILTINS = ("__exp", "__log", "__sqrt", "__rsqrt", "__max", "__min", "__abs", "__tanh")
FUTURE_BUILTINS = ("swap", "rotate")
BUILTINS = ("cdiv", *MATH_BUILTINS, *FUTURE_BUILTINS)
