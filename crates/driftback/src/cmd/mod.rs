//! One file per command. Each reads its input, loads what it needs, and walks change sets through
//! [`crate::driver::Driver`]; none has a road of its own.

pub mod backfill;
pub mod catalog;
pub mod configuration;
pub mod demo;
pub mod eval;
pub mod kb;
pub mod kb_recipes;
pub mod pending;
pub mod policy;
pub mod probe;
pub mod reconcile;
pub mod serve;
pub mod stacks;
