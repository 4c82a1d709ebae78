/// The version of this Till package, as `till --version` prints it and the server names itself.
public enum TillVersion {
    /// Semantic version of the package; raised with each release.
    public static let current = "0.1.0"
}
