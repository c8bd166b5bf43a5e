//! clawrl runtime layer.
