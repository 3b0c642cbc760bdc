// Fuzz target: ProxySecret(parsing:) and ProxySecret(basePathLinkValue:) on arbitrary text.
// Input: [mode] [text...]; mode bit 0 picks the base-path link form.
// Invariants: a parsed secret is 16 bytes or 17 starting 0xdd; its hex and base-path spellings
// parse back to an equal secret; descriptions and mirrors never show the bytes; error
// messages never echo the input.
import WebProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func proxySecretFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let usesLinkForm = input.byte() & 1 == 1
    let text = String(decoding: input.rest(), as: UTF8.self)
    let secret: ProxySecret
    do throws(IdentityError) {
        secret =
            usesLinkForm ? try ProxySecret(basePathLinkValue: text) : try ProxySecret(parsing: text)
    } catch {
        let trimmed = text.filter { !$0.isWhitespace }
        invariant(
            !looksLikeSecret(trimmed) || !error.description.contains(trimmed),
            "error echoes the secret")
        return 0
    }
    let count = secret.bytes.count
    invariant(
        count == 16 || (count == 17 && secret.bytes[0] == 0xDD), "accepted a \(count)-byte secret")
    invariant(secret.isPadded == (count == 17), "isPadded is wrong")
    let fromHex = try? ProxySecret(parsing: secret.hex)
    invariant(fromHex == secret, "hex does not round-trip")
    let fromLinkValue = try? ProxySecret(basePathLinkValue: secret.basePathLinkValue)
    invariant(fromLinkValue == secret, "base-path link value does not round-trip")
    let fromBytes = try? ProxySecret(bytes: secret.bytes)
    invariant(fromBytes == secret, "bytes do not round-trip")
    var dumped = ""
    dump(secret, to: &dumped)
    for shown in [secret.description, String(reflecting: secret), dumped] {
        invariant(!shown.contains(secret.hex), "a description shows the secret")
    }
    return 0
}
