"""Read models: modules that read another domain for one declared purpose (and are listed by name in the
import contract). No other knowledge module reads another domain's tables or imports its code."""
