use crate::{Result, TypeError};

/// The selection along one dimension of an orthogonal selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DimSel {
    /// `count` indices `start, start+step, …` (`step >= 1`).
    Slice { start: u64, count: u64, step: u64 },
    /// Strictly increasing indices.
    Indices(Vec<u64>),
}

impl DimSel {
    /// Number of selected indices.
    pub fn len(&self) -> u64 {
        match self {
            DimSel::Slice { count, .. } => *count,
            DimSel::Indices(i) => i.len() as u64,
        }
    }

    /// Whether nothing is selected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn validate(&self, extent: u64, dim: usize) -> Result<()> {
        match self {
            DimSel::Slice { start, count, step } => {
                if *step == 0 {
                    return Err(TypeError::InvalidSelection(format!(
                        "step must be >= 1 (dimension {dim})"
                    )));
                }
                if *count > 0 {
                    let last = step
                        .checked_mul(count - 1)
                        .and_then(|x| x.checked_add(*start))
                        .ok_or_else(|| TypeError::InvalidSelection("selection overflows".into()))?;
                    if last >= extent {
                        return Err(TypeError::InvalidSelection(format!(
                            "index {last} out of range for dimension {dim} of extent {extent}"
                        )));
                    }
                }
            }
            DimSel::Indices(ix) => {
                if ix.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(TypeError::InvalidSelection(
                        "indices must be strictly increasing".into(),
                    ));
                }
                if let Some(&last) = ix.last() {
                    if last >= extent {
                        return Err(TypeError::InvalidSelection(format!(
                            "index {last} out of range for dimension {dim} of extent {extent}"
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A dataset selection: per-dimension (orthogonal) or a list of points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// The outer product of one [`DimSel`] per dimension; the result has
    /// shape `[sel.len() for sel]`, C order.
    Orthogonal(Vec<DimSel>),
    /// `coords.len() / rank` points, each `rank` coordinates; the result is
    /// one element per point in the given order.
    Points { rank: usize, coords: Vec<u64> },
}

impl Selection {
    /// The whole extent.
    pub fn all(dims: &[u64]) -> Self {
        Selection::Orthogonal(
            dims.iter()
                .map(|&d| DimSel::Slice {
                    start: 0,
                    count: d,
                    step: 1,
                })
                .collect(),
        )
    }

    /// One `(start, count, step)` slice per dimension.
    pub fn from_slices(s: &[(u64, u64, u64)]) -> Self {
        Selection::Orthogonal(
            s.iter()
                .map(|&(start, count, step)| DimSel::Slice { start, count, step })
                .collect(),
        )
    }

    /// Checks the selection against the dataset extent.
    ///
    /// # Errors
    /// Rank mismatch, indices outside `dims`, bad steps or orderings.
    pub fn validate(&self, dims: &[u64]) -> Result<()> {
        match self {
            Selection::Orthogonal(sels) => {
                if sels.len() != dims.len() {
                    return Err(TypeError::InvalidSelection(format!(
                        "selection has rank {} but the dataset has rank {}",
                        sels.len(),
                        dims.len()
                    )));
                }
                sels.iter()
                    .zip(dims)
                    .enumerate()
                    .try_for_each(|(i, (s, &d))| s.validate(d, i))
            }
            Selection::Points { rank, coords } => {
                if *rank != dims.len() || coords.len() % rank.max(&1) != 0 {
                    return Err(TypeError::InvalidSelection(
                        "point coordinates do not match the dataset rank".into(),
                    ));
                }
                for p in coords.chunks(*rank.max(&1)) {
                    if p.iter().zip(dims).any(|(c, d)| c >= d) {
                        return Err(TypeError::InvalidSelection(format!(
                            "point {p:?} outside extent {dims:?}"
                        )));
                    }
                }
                Ok(())
            }
        }
    }

    /// Shape of the selected block.
    pub fn out_shape(&self) -> Vec<u64> {
        match self {
            Selection::Orthogonal(s) => s.iter().map(DimSel::len).collect(),
            Selection::Points { rank, coords } => vec![(coords.len() / (*rank).max(1)) as u64],
        }
    }

    /// Number of selected elements; `u64::MAX` when the count overflows
    /// (never for a selection [`Selection::validate`] accepts within a
    /// shape [`crate::Shape::from_json`] accepted).
    pub fn num_elements(&self) -> u64 {
        crate::shape::saturating_product(&self.out_shape())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_against_extent() {
        let s = Selection::Orthogonal(vec![
            DimSel::Slice {
                start: 1,
                count: 3,
                step: 2,
            },
            DimSel::Indices(vec![0, 4]),
        ]);
        assert!(s.validate(&[7, 5]).is_ok());
        assert!(s.validate(&[5, 5]).is_err());
        assert!(s.validate(&[7, 4]).is_err());
        assert_eq!(s.out_shape(), vec![3, 2]);
        assert!(Selection::Orthogonal(vec![DimSel::Indices(vec![2, 2])])
            .validate(&[5])
            .is_err());
        assert!(Selection::Points {
            rank: 2,
            coords: vec![0, 0, 4, 1]
        }
        .validate(&[5, 2])
        .is_ok());
        assert!(Selection::Points {
            rank: 2,
            coords: vec![0, 2]
        }
        .validate(&[5, 2])
        .is_err());
    }
}
