import Foundation
import PackagePlugin

/// Embeds the package's `Public/` folder (the checkout page) into the target it is applied to,
/// as `EmbeddedPublicFiles`. Every file is an input, so editing the page rebuilds the table.
@main
struct EmbedPublic: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let root = context.package.directoryURL.appending(path: "Public")
        var inputs: [URL] = []
        if let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) {
            for case let url as URL in walker where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
                inputs.append(url)
            }
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedPublicFiles.swift")
        return [
            .buildCommand(
                displayName: "Embedding Public/ in \(target.name)",
                executable: try context.tool(named: "EmbedFiles").url,
                arguments: [root.path, output.path],
                inputFiles: inputs,
                outputFiles: [output])
        ]
    }
}
