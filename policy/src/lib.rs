//! clawrl policy layer.
