//! clawrl trainer layer.
