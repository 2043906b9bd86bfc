//! Generated scenes.
