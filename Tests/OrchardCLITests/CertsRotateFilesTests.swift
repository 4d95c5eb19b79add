import Foundation
import OrchardTesting
import Testing

extension CertsRotateTests {
    @Test("a configuration given as a symbolic link is refused before anything is written, naming the file to give instead")
    func symlinkedConfigurationRefused() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let link = setup.directory.path("link.json")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: setup.configuration)
        let result = try await OrchardProcess.run(
            ["certs", "rotate", "csr", "--type", "processing", "--merchant", Self.merchant, "--config", link])
        #expect(result.status == 1 && result.stderr.contains("is a symbolic link"), "\(result.stderr)")
        #expect(result.stderr.contains(setup.configuration), "names the file itself: \(result.stderr)")
        for folder in [setup.environment.file("rotation"), setup.directory.path("rotation")] {
            #expect(!FileManager.default.fileExists(atPath: folder), "nothing written: \(folder)")
        }
    }

    @Test(
        "under sudo, the new key, its CSR and the edited configuration keep the configuration's owner and group; the key readable by that group only",
        .enabled(if: geteuid() == 0, "needs root to give the configuration another owner: not checked in this run"))
    func rotationKeepsOwnership() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        // The service's user (uid 1, gid 1 here) owns the configuration and reads it through its group too.
        #expect(chown(setup.configuration, 1, 1) == 0 && chmod(setup.configuration, 0o640) == 0)
        #expect(try await setup.rotate("csr").status == 0)
        let folder = try setup.rotationFolder()
        func owner(_ path: String) -> (uid_t, gid_t, mode_t) {
            var info = stat()
            lstat(path, &info)
            return (info.st_uid, info.st_gid, info.st_mode & 0o7777)
        }
        let key = owner(folder + "/processing.key")
        #expect(key.0 == 1 && key.1 == 1 && key.2 == 0o640, "\(key)")
        let csr = owner(folder + "/processing.csr")
        #expect(csr.0 == 1 && csr.1 == 1, "\(csr)")
        let imported = try await setup.rotate("import", ["--cer", try setup.sign(to: "apple_pay.cer")])
        #expect(imported.status == 0, "\(imported.stderr)")
        let certificate = owner(folder + "/processing.pem")
        #expect(certificate.0 == 1 && certificate.1 == 1, "\(certificate)")
        let configuration = owner(setup.configuration)
        #expect(configuration.0 == 1 && configuration.1 == 1 && configuration.2 == 0o640, "\(configuration)")
    }
}
