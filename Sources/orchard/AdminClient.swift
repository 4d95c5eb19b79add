import ArgumentParser
import CurlClient
import Foundation
import OrchardRuntime

/// Options and the call shared by the commands that use a running server's admin API.
struct AdminAPIOptions: ParsableArguments {
    @Option(help: "The Orchard server (http only on loopback).")
    var server: String = "http://127.0.0.1:8080"

    @Option(help: "A file holding the admin token (default: the ORCHARD_ADMIN_TOKEN environment variable).")
    var tokenFile: String?

    func validate() throws {
        guard let url = URLComponents(string: server), let scheme = url.scheme, let host = url.host, !host.isEmpty else {
            throw ValidationError("--server must be a URL like http://127.0.0.1:8080")
        }
        let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw ValidationError("--server must use https unless it is on loopback: the admin token must not cross a network in clear")
        }
    }

    func token() throws -> String {
        let text: String?
        if let tokenFile {
            text = try? String(contentsOfFile: tokenFile, encoding: .utf8)
            guard text != nil else { throw CommandFailure("cannot read --token-file \(tokenFile)") }
        } else {
            text = ProcessInfo.processInfo.environment["ORCHARD_ADMIN_TOKEN"]
        }
        guard let token = text?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else {
            throw CommandFailure("no admin token: set ORCHARD_ADMIN_TOKEN or pass --token-file (the configuration's admin.token)")
        }
        return token
    }

    /// Sends one admin call and prints the JSON answer; a refusal prints one line and exits 1.
    func call(_ method: String, _ path: String, body: [String: Any]? = nil) async throws {
        let json = try await answer(method, path, body: body)
        // isValidJSONObject first: data(withJSONObject:) traps, rather than throws, on what it cannot write.
        if let json, JSONSerialization.isValidJSONObject(json),
            let pretty = try? JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        {
            // The answer holds outside text (tenants' names, processors' and Apple's messages).
            FileHandle.standardOutput.write(Data((TerminalText.escapedJSON(String(decoding: pretty, as: UTF8.self)) + "\n").utf8))
        }
    }

    /// Sends one admin call and returns its JSON answer; a refusal throws its message.
    func answer(_ method: String, _ path: String, body: [String: Any]? = nil) async throws -> Any? {
        let token = try token()
        let client = try CurlHTTPClient(configuration: .init(allowedSchemes: ["http", "https"]))
        defer { client.shutdownBeforeExit() }
        var headers: [(name: String, value: String)] = [(name: "Authorization", value: "Bearer \(token)")]
        var bytes: [UInt8]?
        if let body {
            guard JSONSerialization.isValidJSONObject(body) else { throw CommandFailure("the request body cannot be written as JSON") }
            headers.append((name: "Content-Type", value: "application/json"))
            bytes = Array(try JSONSerialization.data(withJSONObject: body))
        }
        let base = server.hasSuffix("/") ? String(server.dropLast()) : server
        let response: CurlResponse
        do {
            response = try await client.execute(CurlRequest(method: method, url: base + path, headers: headers, body: bytes))
        } catch {
            throw CommandFailure("cannot reach \(server): \(error.message)")
        }
        let json = try? JSONSerialization.jsonObject(with: Data(response.body))
        guard (200..<300).contains(response.status) else {
            let error = (json as? [String: Any])?["error"] as? [String: Any]
            let message = error?["message"] as? String ?? "HTTP \(response.status)"
            throw CommandFailure("\(TerminalText.escaped(message)) (HTTP \(response.status))")
        }
        return json
    }
}
