import ApplePay

/// Which processing keys a merchant's processor can work with. A key Orchard holds works with
/// any processor: Orchard decrypts. A certificate alone, whose private key only the processor
/// holds (the processor issued the CSR), needs a processor that decrypts that token scheme itself.
public enum ProcessingKeyRules {
    /// Why the key named `label` cannot work with `processor`, with the fix; nil when it can.
    public static func refusal(_ key: ProcessingKey, label: String, processor: any ProcessorSettings) -> String? {
        guard let scheme = key.processorHeldScheme, let reason = processor.cannotDecrypt(scheme) else { return nil }
        return """
            \(label) is a certificate alone (the processor holds its private key and decrypts), but \(reason): \
            give its private key so that Orchard decrypts, or a processor that decrypts \(scheme.rawValue) tokens \
            itself (worldpay, or worldline with decryption processor)
            """
    }
}
