/// Which Orchard this is: what `orchard --version` and `orchard-sandbox --version` print. Changed
/// here, once, for each release.
public enum Release {
    public static let version = "0.1.0"
}
