/// Who captures (settles) an authorized payment.
public enum CaptureMode: String, Sendable, Codable, CaseIterable {
    /// Orchard captures it right after the authorization, and retries a capture the processor
    /// refuses (``ShopCart/capture``).
    case automatic
    /// The shop captures it with `POST /v1/payments/{id}/capture`, or cancels it.
    case manual
}
