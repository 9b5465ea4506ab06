//! What the CPU paths' buffers hold: the step, its tree and the world each sum their
//! vectors' capacities with [`bytes`] to report their memory.

/// The bytes `vector` holds.
pub(crate) fn bytes<T>(vector: &Vec<T>) -> usize {
    vector.capacity() * std::mem::size_of::<T>()
}
