//! Screen to ray.
