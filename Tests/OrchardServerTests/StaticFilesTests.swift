import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import OrchardCore
import OrchardInMemory
import OrchardServerTesting
import OrchardTesting
import Testing

@testable import OrchardConfiguration
@testable import OrchardServer
@testable import OrchardServices

/// The checkout page's files from memory: validators, 304s, ranges, and a public folder's
/// files following the disk.
@Suite("Static files: cached, revalidated, ranged")
struct StaticFilesTests {
    /// The app through the router alone, serving the built-in page, or `site` from `directory` on `clock`.
    static func withApp(
        site: Bool = false, clock: ManualClock = ManualClock(),
        _ body: @escaping @Sendable (any TestClientProtocol, TemporaryDirectory) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        if site {
            try FileManager.default.createDirectory(atPath: directory.path("site"), withIntermediateDirectories: true)
            try directory.write("site/index.html", Array("<p>first</p>".utf8))
            try directory.write("site/app.js", Array("let a = 1\n".utf8))
            try directory.write("site/large.bin", [UInt8](repeating: 7, count: StaticFileCache.maximumFileBytes + 10))
        }
        let app = buildApplication(
            try .testing(time: clock.source) { if site { $0.publicDirectory = directory.path("site") } })
        try await app.test(.router) { client in try await body(client, directory) }
    }

    @Test("the built-in page: a strong ETag and Last-Modified; If-None-Match or If-Modified-Since gets a 304 without a body")
    func validators() async throws {
        try await Self.withApp { client, _ in
            let page = try await client.execute(uri: "/", method: .get)
            #expect(page.status == .ok)
            let etag = try #require(page.headers[.eTag])
            let modified = try #require(page.headers[.lastModified])
            #expect(etag.hasPrefix("\"") && !etag.hasPrefix("W/"))
            #expect(page.headers[.contentType]?.hasPrefix("text/html") == true)
            #expect(page.headers[.contentLength] == String(page.body.readableBytes))
            #expect(try await client.execute(uri: "/index.html", method: .get).headers[.eTag] == etag, "one file, one tag")
            for headers: HTTPFields in [[.ifNoneMatch: etag], [.ifNoneMatch: "\"other\", W/\(etag)"], [.ifModifiedSince: modified]] {
                let revalidated = try await client.execute(uri: "/", method: .get, headers: headers)
                #expect(revalidated.status == .notModified, "\(headers)")
                #expect(revalidated.body.readableBytes == 0)
                #expect(revalidated.headers[.eTag] == etag)
                #expect(revalidated.headers[.contentSecurityPolicy] != nil, "security headers on every answer")
            }
            let changed = try await client.execute(uri: "/", method: .get, headers: [.ifNoneMatch: "\"an-older-version\""])
            #expect(changed.status == .ok && changed.body == page.body)
            let head = try await client.execute(uri: "/orchard.js", method: .head)
            #expect(head.status == .ok && head.body.readableBytes == 0)
            #expect(head.headers[.contentLength].flatMap(Int.init) ?? 0 > 1000)
        }
    }

    @Test("one byte range is a 206, a range past the end a 416, several ranges or a stale If-Range the whole file")
    func ranges() async throws {
        try await Self.withApp { client, _ in
            let whole = try await client.execute(uri: "/index.html", method: .get)
            let size = whole.body.readableBytes
            let tail = try await client.execute(uri: "/index.html", method: .get, headers: [.range: "bytes=-7"])
            #expect(tail.status == .partialContent)
            #expect(tail.headers[.contentRange] == "bytes \(size - 7)-\(size - 1)/\(size)")
            #expect(tail.body == whole.body.getSlice(at: size - 7, length: 7))
            let past = try await client.execute(uri: "/index.html", method: .get, headers: [.range: "bytes=\(size)-"])
            #expect(past.status == .rangeNotSatisfiable && past.headers[.contentRange] == "bytes */\(size)")
            for headers: HTTPFields in [[.range: "bytes=0-1,4-5"], [.range: "bytes=0-1", .ifRange: "\"stale\""]] {
                let full = try await client.execute(uri: "/index.html", method: .get, headers: headers)
                #expect(full.status == .ok && full.body == whole.body, "\(headers)")
            }
        }
        #expect(ByteRange("bytes=2-", size: 10) == .satisfiable(2...9))
        #expect(ByteRange("bytes=2-100", size: 10) == .satisfiable(2...9))
        #expect(ByteRange("bytes=-0", size: 10) == .unsatisfiable)
        #expect(ByteRange("bytes=5-2", size: 10) == nil)
        #expect(ByteRange("items=0-1", size: 10) == nil)
    }

    @Test("a public folder follows the disk within a second: an edit, a removal, a file added later; large files come from the disk")
    func publicFolderFollowsTheDisk() async throws {
        let clock = ManualClock()
        try await Self.withApp(site: true, clock: clock) { client, directory in
            let first = try await client.execute(uri: "/", method: .get)
            #expect(String(buffer: first.body) == "<p>first</p>")
            try directory.write("site/index.html", Array("<p>second, longer</p>".utf8))
            clock.advance(StaticFileCache.revalidateAfter + 1)
            let second = try await client.execute(uri: "/", method: .get)
            #expect(String(buffer: second.body) == "<p>second, longer</p>")
            #expect(second.headers[.eTag] != first.headers[.eTag])
            #expect(String(buffer: try await client.execute(uri: "/index.html", method: .get).body) == "<p>second, longer</p>")

            try FileManager.default.removeItem(atPath: directory.path("site/app.js"))
            clock.advance(StaticFileCache.revalidateAfter + 1)
            #expect(try await client.execute(uri: "/app.js", method: .get).status == .notFound)

            // A file added after startup: its path's 404 is remembered for a second, then it is served from the disk.
            #expect(try await client.execute(uri: "/later.js", method: .get).status == .notFound)
            try directory.write("site/later.js", Array("let b = 2\n".utf8))
            #expect(try await client.execute(uri: "/later.js", method: .get).status == .notFound)
            clock.advance(StaticFileCache.revalidateAfter + 1)
            #expect(String(buffer: try await client.execute(uri: "/later.js", method: .get).body) == "let b = 2\n")

            let large = try await client.execute(uri: "/large.bin", method: .get)
            #expect(large.status == .ok && large.body.readableBytes == StaticFileCache.maximumFileBytes + 10)
        }
    }
}
