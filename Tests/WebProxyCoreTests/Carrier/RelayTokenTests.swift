import Testing

@testable import WebProxyCore

@Suite struct RelayTokenTests {
    @Test(arguments: [
        "MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw", "gOx9FY68rPEh0FM7ZhyU1K6id2MjPAn8cey9Xwbjr_0",
        "XJoJC8epRCJQm4RXbL4xr4So8--vuV1i7YMXVLXWxjE", "lZzyOjqjqNcmS1VOcz3i7FG3vYDIN3kwClpma2Nn-9A",
    ])
    func acceptsRecordedTokens(text: String) throws {
        let token = try #require(RelayToken(text))
        #expect(token.text == text)
    }

    @Test(arguments: [
        "", "MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2n", "MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nwA",
        "MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2n=", "MYE7OFC3Gft+q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",
        "MYE7OFC3Gft/q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw", "MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nx",
        " YE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw", "MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2n\u{00E9}",
    ])
    func rejectsNonCanonicalTokens(text: String) {
        #expect(RelayToken(text) == nil)
    }

    @Test func neverShowsItself() throws {
        let secret = "MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw"
        let token = try #require(RelayToken(secret))
        var dumped = ""
        dump(token, to: &dumped)
        for shown in [String(describing: token), String(reflecting: token), "\(token)", dumped] {
            #expect(!shown.contains(secret))
            #expect(!shown.contains("MYE7"))
        }
    }
}
