import Testing
import TillGatewayKit

@Suite("CanonicalString")
struct CanonicalStringTests {
    let builder = CanonicalString(pairs: [("merchant_identifier", "MxvOupuG"), ("amount", "1000"), ("Zeta", "z"),
                                          ("signature", "abc"), ("empty", ""), ("élan", "e"), ("access_code", "SILgpo")])

    struct Case: Sendable, CustomTestStringConvertible {
        var order: CanonicalString.Order
        var pairSeparator: String
        var keyValueSeparator: String
        var omitEmpty: Bool
        var excluding: Set<String>
        var expected: String
        var testDescription: String { "\(order) \"\(pairSeparator)\" \"\(keyValueSeparator)\" omit:\(omitEmpty) excluding:\(excluding.sorted())" }
    }

    @Test("each order, separator, omission and exclusion", arguments: [
        Case(order: .asGiven, pairSeparator: "", keyValueSeparator: "=", omitEmpty: false, excluding: [],
             expected: "merchant_identifier=MxvOupuGamount=1000Zeta=zsignature=abcempty=élan=eaccess_code=SILgpo"),
        Case(order: .sortedByKey, pairSeparator: "", keyValueSeparator: "=", omitEmpty: false, excluding: ["signature"],
             expected: "Zeta=zaccess_code=SILgpoamount=1000empty=merchant_identifier=MxvOupuGélan=e"),
        Case(order: .sortedByKey, pairSeparator: "&", keyValueSeparator: "=", omitEmpty: true, excluding: ["signature"],
             expected: "Zeta=z&access_code=SILgpo&amount=1000&merchant_identifier=MxvOupuG&élan=e"),
        Case(order: .asGiven, pairSeparator: ";", keyValueSeparator: ":", omitEmpty: false, excluding: ["signature", "élan"],
             expected: "merchant_identifier:MxvOupuG;amount:1000;Zeta:z;empty:;access_code:SILgpo"),
        Case(order: .asGiven, pairSeparator: "&", keyValueSeparator: "=", omitEmpty: true, excluding: [],
             expected: "merchant_identifier=MxvOupuG&amount=1000&Zeta=z&signature=abc&élan=e&access_code=SILgpo"),
        Case(order: .sortedByKey, pairSeparator: ";", keyValueSeparator: ":", omitEmpty: false, excluding: [],
             expected: "Zeta:z;access_code:SILgpo;amount:1000;empty:;merchant_identifier:MxvOupuG;signature:abc;élan:e"),
        Case(order: .sortedByKey, pairSeparator: "&", keyValueSeparator: "=", omitEmpty: true,
             excluding: ["merchant_identifier", "amount", "Zeta", "signature", "élan", "access_code"], expected: ""),
    ])
    func render(_ c: Case) {
        #expect(builder.render(order: c.order, pairSeparator: c.pairSeparator, keyValueSeparator: c.keyValueSeparator,
                               omitEmptyValues: c.omitEmpty, excluding: c.excluding) == c.expected)
    }

    @Test("the default order is as given")
    func defaultOrder() {
        #expect(CanonicalString(pairs: [("b", "1"), ("a", "2")]).render(pairSeparator: "&", keyValueSeparator: "=") == "b=1&a=2")
    }

    @Test("sorting is by code point, not locale; equal keys keep their order")
    func codePointOrder() {
        let pairs = CanonicalString(pairs: [("b", "1"), ("a", "2"), ("B", "3"), ("a", "1"), ("ab", "4"), ("a_b", "5"), ("中", "6"), ("é", "7")])
        #expect(pairs.render(order: .sortedByKey, pairSeparator: ",", keyValueSeparator: "=") == "B=3,a=2,a=1,a_b=5,ab=4,b=1,é=7,中=6")
    }

    @Test("built from form fields, in their order")
    func fromFields() {
        let fields = FormFields([("x", "1"), ("y", "2")])
        #expect(CanonicalString(fields: fields).render(pairSeparator: "", keyValueSeparator: "") == "x1y2")
    }
}
