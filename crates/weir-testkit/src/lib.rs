//! weir-testkit
