import Foundation
import Testing

@testable import LocationsService

/// The backup's age on `/metrics` comes from the newest backup `pgbackrest info --output=json` lists.
@Suite struct BackupGaugesTests {
    @Test func theNewestBackupOfAnyKindIsTheOneThatCounts() {
        let info = Data(
            """
            [{"name":"onthemap","backup":[
              {"label":"20261128-094849F","type":"full","timestamp":{"start":1795859329,"stop":1795859332}},
              {"label":"20261128-094849F_20261128-154900D","type":"diff","timestamp":{"start":1795881000,"stop":1795881004}}
            ],"status":{"code":0,"message":"ok"}}]
            """.utf8)
        #expect(BackupGauges.newestBackupEnd(inInfo: info) == Date(timeIntervalSince1970: 1_795_881_004))
    }

    @Test func aRepositoryWithoutBackupsHasNoAge() {
        let info = Data(#"[{"name":"onthemap","backup":[],"status":{"code":2,"message":"no valid backups"}}]"#.utf8)
        #expect(BackupGauges.newestBackupEnd(inInfo: info) == nil)
        #expect(BackupGauges.newestBackupEnd(inInfo: Data("not json".utf8)) == nil)
    }
}
