//! Reading delimited text fast, for the run directory's series and every importer: lines and
//! fields split with SIMD where the CPU has it ([`rows`], [`block`]), a large file read in
//! parallel parts that agree with one pass ([`parts`]), numbers and civil times parsed without
//! allocating ([`num`], [`point`], [`civil`]), and the error every reader reports, naming the
//! file, line and column ([`error`]).
//!
//! It holds all of volley's `unsafe` reading code (the SIMD splits), each block with its
//! SAFETY note, behind safe functions that property tests pin to plain reference versions.

pub mod block;
pub mod civil;
pub mod error;
pub mod num;
pub mod parts;
pub mod point;
pub mod rows;

pub use error::{Error, Kind, Result};
