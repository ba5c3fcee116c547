// What the sync engine needs of the API client: batched reads by id and paginated lists. Tests may hand
// in any object of this shape; production passes the ApiClient from src/api/.
import type { ApiClient } from '../api/types.ts';

export type Reader = Pick<ApiClient, 'getByIds' | 'paginate'> & { readonly connection: { id: number; name: string } };
