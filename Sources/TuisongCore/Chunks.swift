extension Array {
    /// The array cut into consecutive slices of `size` elements, the last one shorter when
    /// `count` is not a multiple; none for an empty array. Batches of SQL parameters and of
    /// pushes are cut with it.
    ///
    ///     [1, 2, 3, 4, 5].chunks(ofCount: 2)  // [[1, 2], [3, 4], [5]]
    public func chunks(ofCount size: Int) -> [ArraySlice<Element>] {
        precondition(size > 0, "a chunk holds at least one element")
        return stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
