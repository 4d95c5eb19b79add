import Foundation
import PackagePlugin

/// Embeds the package's `Public/` folder (the checkout page) into the target it is applied to,
/// as `EmbeddedPublicFiles`, and the target's own `OpenAPI/` folder (the API description), when
/// it has one, as `EmbeddedOpenAPIFiles`. Every file is an input, so editing one rebuilds its table.
///
/// Compiled in rather than shipped as SwiftPM resources: on Linux those live in a bundle folder
/// beside the executable, which a production image that copies only `orchard` would lack.
@main
struct EmbedPublic: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let tool = try context.tool(named: "EmbedFiles").url
        var commands = [
            Self.embed(
                context.package.directoryURL.appending(path: "Public"), as: "EmbeddedPublicFiles", tool: tool, context: context,
                target: target)
        ]
        let openAPI = target.directoryURL.appending(path: "OpenAPI")
        if FileManager.default.fileExists(atPath: openAPI.path) {
            commands.append(Self.embed(openAPI, as: "EmbeddedOpenAPIFiles", tool: tool, context: context, target: target))
        }
        return commands
    }

    /// One run of EmbedFiles: `folder` as the Swift enum `name`.
    static func embed(_ folder: URL, as name: String, tool: URL, context: PluginContext, target: any Target) -> Command {
        var inputs: [URL] = []
        if let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey]) {
            for case let url as URL in walker where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
                inputs.append(url)
            }
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "\(name).swift")
        return .buildCommand(
            displayName: "Embedding \(folder.lastPathComponent)/ in \(target.name)",
            executable: tool,
            arguments: [folder.path, output.path, name],
            inputFiles: inputs,
            outputFiles: [output])
    }
}
