import Testing
@testable import WebProxyCore

@Suite struct FlowWindowTests {
    @Test func startsWithFourMebibytes() {
        let window = FlowWindow()
        #expect(window.credit == 4_194_304)
        #expect(window.available == 4_194_304)
    }

    @Test func consumesExactlyTheCreditAndNoMore() {
        var window = FlowWindow(credit: 10)
        var results: [Bool] = []
        var credits: [UInt64] = []
        for count in [4, 7, 6, 1, 0, -1] {
            results.append(window.consume(count))
            credits.append(window.credit)
        }
        #expect(results == [true, false, true, false, true, false])
        #expect(credits == [6, 6, 0, 0, 0, 0])
    }

    @Test func grantsAdd() {
        var window = FlowWindow(credit: 0)
        window.grant(16)
        window.grant(100)
        #expect(window.credit == 116)
    }

    @Test func twoMaximalGrantsSaturateAtTwoToTheThirtyTwoMinusOne() {
        var window = FlowWindow()
        window.grant(0xFFFF_FFFF)
        #expect(window.credit == 0xFFFF_FFFF)
        window.grant(0xFFFF_FFFF)
        #expect(window.credit == 0xFFFF_FFFF)
        let consumed = window.consume(1)
        #expect(consumed)
        #expect(window.credit == 0xFFFF_FFFE)
    }

    @Test func initialCreditIsClamped() {
        #expect(FlowWindow(credit: .max).credit == FlowWindow.maximumCredit)
    }
}
