/// A text a person reads, in both of the console's languages: a label or help a provider or
/// transport declares, a service code's meaning, the detail of a refusal. The APIs give it as
/// `{"en": …, "zh": …}` beside the English text they always had, so the console in Chinese
/// never shows a server's English.
public struct LocalizedText: Sendable, Hashable {
    public var en: String
    public var zh: String

    public init(en: String, zh: String) {
        self.en = en
        self.zh = zh
    }

    /// As the JSON answers carry it.
    public var json: [String: String] { ["en": en, "zh": zh] }
}
