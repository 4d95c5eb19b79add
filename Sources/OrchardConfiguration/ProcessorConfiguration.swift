import Foundation
import OrchardCore
import OrchardServices

extension ServerConfiguration {
    /// `merchants[].processor`: checked by the driver of its `type` (record when absent).
    static func resolveProcessor(
        _ section: ProcessorSection?, label: String, values: ConfigurationValues, drivers: [any ProcessorDriver]
    ) throws(ConfigurationError) -> any ProcessorSettings {
        guard var section else { return RecordOnlySettings() }
        section.label = "\(label).processor"
        guard let driver = drivers.first(where: { $0.type == section.type }) else {
            let names = drivers.map(\.type)
            let known = names.count > 1 ? "\(names.dropLast().joined(separator: ", ")) or \(names[names.count - 1])" : names.joined()
            throw ConfigurationError("\(section.label).type must be \(known) (got \(section.type))")
        }
        return try driver.settings(from: section, values: values)
    }
}
