import Crypto
import Foundation

/// The `.order` file Wallet fetches: `order.json`, its images, `manifest.json` (SHA-256 of each
/// of those) and `signature` (detached CMS over the manifest), zipped
/// (developer.apple.com/documentation/walletorders/building-a-distributable-order-package).
public enum WalletOrderPackage {
    /// The Content-Type Apple's web service answers an order with.
    public static let contentType = "application/vnd.apple.finance.order"

    /// The package for `order`, with `images` (PNG files at the top level), signed by `signer` at `signingTime`.
    public static func build(
        _ order: WalletOrder, images: [StoredZip.Entry], signer: OrderTypeIdentity, signingTime: Date
    ) throws(WalletOrderError) -> [UInt8] {
        guard order.orderTypeIdentifier == signer.orderTypeIdentifier else {
            throw WalletOrderError(
                .invalidOrder,
                "the order's type \(order.orderTypeIdentifier) is not the signing certificate's \(signer.orderTypeIdentifier)")
        }
        if let problem = order.problems().first { throw WalletOrderError(.invalidOrder, problem) }
        let files = [StoredZip.Entry(path: "order.json", bytes: try WalletOrderJSON.encode(order))] + images
        let manifest = try WalletOrderManifest.json(for: files)
        let signature = try signer.signature(over: manifest, signingTime: signingTime)
        let all =
            files + [
                StoredZip.Entry(path: "manifest.json", bytes: manifest), StoredZip.Entry(path: "signature", bytes: signature),
            ]
        do {
            return try StoredZip.archive(all, modified: order.updatedAt)
        } catch {
            throw WalletOrderError(.invalidOrder, "cannot zip the order package (\(error))")
        }
    }
}

/// `manifest.json`: every file of the package but the manifest and signature, by path, with the
/// lowercase hex SHA-256 of its bytes.
public enum WalletOrderManifest {
    public static func json(for files: [StoredZip.Entry]) throws(WalletOrderError) -> [UInt8] {
        var hashes: [String: String] = [:]
        for file in files { hashes[file.path] = sha256Hex(file.bytes) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(hashes))
        } catch {
            throw WalletOrderError(.invalidOrder, "cannot write the manifest (\(error))")
        }
    }

    /// SHA-256 of `bytes`, lowercase hex.
    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in SHA256.hash(data: bytes) {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
