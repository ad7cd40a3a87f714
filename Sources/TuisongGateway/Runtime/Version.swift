/// The gateway's version, printed by `tuisong version` and the start banner.
public enum TuisongVersion {
    public static let current = "0.1.0"
}
