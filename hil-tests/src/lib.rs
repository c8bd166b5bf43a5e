//! clawrl hil-tests layer.
