//! The runtime's last check before a command leaves the robot computer: every target must be
//! finite and inside its joint's limits. (The firmware enforces the same limits again: neither
//! side trusts the other.)

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GuardError {
    #[error("target has {got} values, the robot has {expected} servos")]
    Length { expected: usize, got: usize },
    #[error("target[{index}] is {value}: refusing a non-finite command")]
    NonFinite { index: usize, value: f32 },
}

/// Joint limits per servo, in radians.
#[derive(Debug, Clone, PartialEq)]
pub struct JointGuard {
    limits: Vec<[f32; 2]>,
}

/// A target that passed the guard, and how many entries it had to clamp.
#[derive(Debug, Clone, PartialEq)]
pub struct Guarded {
    pub target: Vec<f32>,
    pub clamped: usize,
}

impl JointGuard {
    pub fn new(limits: Vec<[f32; 2]>) -> Self {
        assert!(
            limits.iter().all(|[lo, hi]| lo <= hi),
            "every limit needs lo <= hi"
        );
        Self { limits }
    }

    /// Refuses a target of the wrong length or with a NaN/inf (nothing is sent), otherwise
    /// clamps each entry to its limits.
    pub fn check(&self, target: &[f32]) -> Result<Guarded, GuardError> {
        if target.len() != self.limits.len() {
            return Err(GuardError::Length {
                expected: self.limits.len(),
                got: target.len(),
            });
        }
        if let Some(index) = target.iter().position(|t| !t.is_finite()) {
            return Err(GuardError::NonFinite {
                index,
                value: target[index],
            });
        }
        let mut clamped = 0;
        let target = target
            .iter()
            .zip(&self.limits)
            .map(|(t, [lo, hi])| {
                let c = t.clamp(*lo, *hi);
                clamped += usize::from(c != *t);
                c
            })
            .collect();
        Ok(Guarded { target, clamped })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> JointGuard {
        JointGuard::new(vec![[-0.6, 0.6], [-2.6, -0.6]])
    }

    #[test]
    fn in_range_targets_pass_unchanged() {
        assert_eq!(
            guard().check(&[0.1, -1.0]).unwrap(),
            Guarded {
                target: vec![0.1, -1.0],
                clamped: 0
            }
        );
    }

    #[test]
    fn out_of_range_targets_are_clamped_to_the_limit() {
        let g = guard().check(&[5.0, 0.0]).unwrap();
        assert_eq!(g.target, vec![0.6, -0.6]);
        assert_eq!(g.clamped, 2);
    }

    #[test]
    fn non_finite_or_wrong_length_targets_are_refused() {
        assert!(matches!(
            guard().check(&[f32::NAN, -1.0]),
            Err(GuardError::NonFinite { index: 0, .. })
        ));
        assert!(matches!(
            guard().check(&[0.0, f32::INFINITY]),
            Err(GuardError::NonFinite { index: 1, .. })
        ));
        assert_eq!(
            guard().check(&[0.0]),
            Err(GuardError::Length {
                expected: 2,
                got: 1
            })
        );
    }
}
