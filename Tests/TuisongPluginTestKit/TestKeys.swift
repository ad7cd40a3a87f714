import Synchronization
import TuisongCrypto

/// RSA keys shared by the tests of one process, for a test that needs a key of the right shape
/// but not one of its own (a service account file, a key a look-alike does not trust, a refusal
/// of the wrong kind): a 2,048-bit key costs ~0.15 s of CPU to make, and the suite made dozens
/// (issue #46). `rsa(0)` and `rsa(1)` are two different keys, both unknown to the look-alikes'
/// own setup (`LookAlikeLocalSetup` makes its own), so a test that needs a stranger next to a
/// trusted key takes the other index. The crypto tests still make theirs.
public enum TestKeys {
    public static func rsa(_ index: Int = 0) throws -> PrivateKey {
        try keys.withLock { keys in
            if let key = keys[index] { return key }
            let key = try PrivateKey.generateRSA(bits: 2048)
            keys[index] = key
            return key
        }
    }

    private static let keys = Mutex<[Int: PrivateKey]>([:])
}
