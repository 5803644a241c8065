"""Operations: Prometheus metrics and health endpoints, and the failpoints the crash tests arm."""
