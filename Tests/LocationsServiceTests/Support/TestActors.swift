import HTTPTypes
import OnTheMapShared
import TestSupport

/// Accounts the tests act as, and the headers the gateway would send for them.
enum TestActors {
    static let jarrod = Actor(key: "3903878747", firstName: "Jarrod", lastName: "Parkes")
    static let amara = Actor(key: "5550001111", firstName: "Amara", lastName: "Nwosu")
    static let joao = Actor(key: "7770002222", firstName: "João", lastName: "Araújo")

    /// One of many students, each with pins of their own (the map's latest 100 are many people's).
    static func student(_ number: Int) -> Actor { Actor(key: "student-\(number)", firstName: "Student", lastName: "No. \(number)") }

    static let tokenHeader = HTTPField(name: .authorization, value: "Bearer \(TestDatabase.internalToken)")

    static func headers(as actor: Actor? = nil, _ extra: [HTTPField] = []) -> HTTPFields {
        var fields = HTTPFields([tokenHeader, HTTPField(name: .contentType, value: "application/json")])
        if let actor { fields.append(HTTPField(name: HTTPField.Name(InternalHeaders.actor)!, value: actor.headerValue)) }
        fields.append(contentsOf: extra)
        return fields
    }
}
